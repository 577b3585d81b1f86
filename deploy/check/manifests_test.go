// Package check validates the deployment files of deploy/ without a
// cluster: every Kubernetes object decodes strictly into the API's own Go
// types (an unknown or misspelt field, or a value of the wrong type, is an
// error), and the objects carry what a tenure cluster needs to keep its
// quorum and its secrets.
package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the objects of deploy/kubernetes, by kind and name.
type manifests struct {
	services    map[string]*corev1.Service
	pdbs        []*policyv1.PodDisruptionBudget
	statefulSet *appsv1.StatefulSet
}

// decodeDoc decodes one YAML document strictly into the API type of its
// kind, into m; a document of comments only is skipped.
func (m *manifests) decodeDoc(doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	var obj any
	switch head.APIVersion + " " + head.Kind {
	case " ":
		return nil
	case "v1 Service":
		obj = &corev1.Service{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	default:
		return fmt.Errorf("%s %s is not a kind this check knows", head.APIVersion, head.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", head.Kind, err)
	}
	switch o := obj.(type) {
	case *corev1.Service:
		m.services[o.Name] = o
	case *policyv1.PodDisruptionBudget:
		m.pdbs = append(m.pdbs, o)
	case *appsv1.StatefulSet:
		m.statefulSet = o
	}
	return nil
}

func load(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("../kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes (%v)", err)
	}
	m := manifests{services: map[string]*corev1.Service{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			if err := m.decodeDoc(doc); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
		}
	}
	if m.statefulSet == nil {
		t.Fatal("deploy/kubernetes has no StatefulSet")
	}
	return m
}

// TestDecodingRefusesMistakes: the check is not vacuous: a misspelt field,
// a value of the wrong type and an unknown kind each fail it.
func TestDecodingRefusesMistakes(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  replica: 3\n",
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  replicas: three\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  publishNotReadyAdresses: true\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	} {
		m := manifests{services: map[string]*corev1.Service{}}
		if err := m.decodeDoc([]byte(doc)); err == nil {
			t.Errorf("decoded without an error:\n%s", doc)
		}
	}
}

func TestKubernetesManifests(t *testing.T) {
	m := load(t)
	ss := m.statefulSet
	spec := ss.Spec.Template.Spec

	// Discovery: a headless service publishing not-ready pods, so that the
	// servers find each other by name before any of them is ready.
	svc := m.services[ss.Spec.ServiceName]
	if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("service %q: want a headless service (clusterIP None) with publishNotReadyAddresses", ss.Spec.ServiceName)
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", ss.Spec.Replicas)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	args := c.Args
	wantArg := func(arg string) {
		if !slices.Contains(args, arg) {
			t.Errorf("server args %q lack %s", args, arg)
		}
	}
	wantArg("-bootstrap-expect=3")
	wantArg("-join=tenure-0.tenure:7502,tenure-1.tenure:7502,tenure-2.tenure:7502")
	wantArg("-acl-enabled")
	// ACLs need Raft over mutual TLS: a server refuses them without it.
	for _, flag := range []string{"-tls-cert-file=", "-tls-key-file=", "-tls-ca-file="} {
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) }) {
			t.Errorf("server args %q have -acl-enabled but lack %s: ACLs need Raft over mutual TLS", args, flag)
		}
	}
	wantArg("-data-dir=/data")

	// The quorum during voluntary disruptions: one server at a time.
	onePDB := false
	for _, p := range m.pdbs {
		if p.Spec.MaxUnavailable != nil && p.Spec.MaxUnavailable.IntValue() == 1 &&
			p.Spec.Selector != nil && p.Spec.Selector.MatchLabels["app.kubernetes.io/name"] == ss.Spec.Template.Labels["app.kubernetes.io/name"] {
			onePDB = true
		}
	}
	if !onePDB {
		t.Error("no PodDisruptionBudget with maxUnavailable 1 over the servers")
	}

	// Readiness on /readyz, liveness on /healthz, over the TLS the server
	// speaks.
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("readiness probe %+v, want GET /readyz over HTTPS", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("liveness probe %+v, want GET /healthz over HTTPS", p)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests %v, want cpu and memory", c.Resources.Requests)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 15 {
		t.Errorf("terminationGracePeriodSeconds %v: a stopping leader needs time to hand over", g)
	}

	// The secure settings come from Secrets: the TLS files from a mounted
	// Secret, the gossip key from an environment variable of a Secret.
	tlsVolume := ""
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			tlsVolume = v.Name
		}
	}
	mounted := ""
	for _, vm := range c.VolumeMounts {
		if vm.Name == tlsVolume && vm.ReadOnly {
			mounted = vm.MountPath
		}
	}
	if tlsVolume == "" || mounted == "" {
		t.Errorf("no Secret volume mounted read-only for TLS (volumes %+v)", spec.Volumes)
	}
	for _, flag := range []string{"-tls-cert-file=", "-tls-key-file=", "-tls-ca-file="} {
		i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) })
		if i < 0 || mounted == "" || !strings.HasPrefix(strings.TrimPrefix(args[i], flag), mounted+"/") {
			t.Errorf("server args lack %s a file of the Secret mounted at %q", flag, mounted)
		}
	}
	gossipKey := false
	for _, e := range c.Env {
		if e.Name == "TENURE_GOSSIP_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			gossipKey = true
		}
	}
	if !gossipKey {
		t.Error("TENURE_GOSSIP_KEY does not come from a Secret")
	}
	for _, a := range args {
		if strings.Contains(a, "gossip-key=") {
			t.Errorf("the gossip key is in the args (%s), where anyone who reads the StatefulSet sees it", a)
		}
	}
}
