package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestRelativeLinksResolve checks every relative link of README.md,
// docs/*.md and docs/adr/*.md: the file (or folder) it names exists, and
// a #fragment into a Markdown file names one of its headings, as GitHub
// makes anchors of them. Text moves between the README and the guides;
// this is what keeps their links and the screenshots' paths from
// breaking unseen.
func TestRelativeLinksResolve(t *testing.T) {
	files := docFiles(t)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(text))
		anchors[path] = a
		return a, nil
	}
	checked := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(text)) {
			target, frag, _ := strings.Cut(l.target, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link to %s: no such file", file, l.line, l.target)
					continue
				}
			}
			checked++
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			a, err := anchorsOf(path)
			if err != nil {
				t.Errorf("%s:%d: link to %s: %v", file, l.line, l.target, err)
				continue
			}
			if !a[frag] {
				t.Errorf("%s:%d: link to %s: %s has no heading with the anchor #%s", file, l.line, l.target, path, frag)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d relative links, want at least 100: is the link reader broken?", checked)
	}
}

// The link reader and the anchors follow GitHub's rules on cases that
// the docs use.
func TestLinkReaderAndAnchors(t *testing.T) {
	text := "# Title\n\n## The inspection page (`/ui`)\n\n" +
		"## Scale: how costs grow, and where one cluster ends\n\n## Title\n\n" +
		"See [a](a.md#x), ![img](img/p.png) and `[not](code.md)`.\n\n" +
		"```sh\n# not a heading\necho [no](link.md)\n```\n" +
		"[b](https://example.com) [c](#title-1)\n"
	a := headingAnchors(text)
	for _, want := range []string{"title", "title-1", "the-inspection-page-ui", "scale-how-costs-grow-and-where-one-cluster-ends"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("a comment in a code block became an anchor")
	}
	wantJoined(t, "links", markdownLinks(text), func(l mdLink) string { return l.target }, "a.md#x img/p.png #title-1")
}

// docFiles returns the Markdown files the doc tests read: README.md,
// docs/*.md and docs/adr/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md"}
	for _, pattern := range []string{"*.md", "adr/*.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// wantJoined fails the test unless what's found items, each as name
// gives it and joined with spaces, are want.
func wantJoined[T any](t *testing.T, what string, items []T, name func(T) string, want string) {
	t.Helper()
	var got []string
	for _, it := range items {
		got = append(got, name(it))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("%s: got %q, want %q", what, strings.Join(got, " "), want)
	}
}

type mdLink struct {
	target string
	line   int
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE   = regexp.MustCompile("`[^`]*`")
	schemeLinkRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownLinks returns the relative targets of the inline links and
// images of text, outside code blocks and code spans.
func markdownLinks(text string) []mdLink {
	var out []mdLink
	markdownLines(text, func(n int, line string, inCode bool) {
		if inCode {
			return
		}
		line = codeSpanRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			if schemeLinkRE.MatchString(m[1]) {
				continue
			}
			out = append(out, mdLink{target: m[1], line: n})
		}
	})
	return out
}

// markdownLines calls f with each line of text, its number (from 1), and
// whether it is inside a ``` code block; the fence lines are left out.
func markdownLines(text string, f func(n int, line string, inCode bool)) {
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		f(i+1, line, inCode)
	}
}

// headingAnchors returns the anchors GitHub makes of the headings of
// text: lower case, punctuation dropped, spaces as dashes, and -1, -2 …
// after an anchor already taken.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	markdownLines(text, func(_ int, line string, inCode bool) {
		if inCode || !strings.HasPrefix(line, "#") {
			return
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		for n := 1; out[anchor]; n++ {
			anchor = b.String() + "-" + itoa(n)
		}
		out[anchor] = true
	})
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// repoPath is a path of this repository written in a code span:
// `cluster/internal/lessor/lessor.go`, `client/go.mod`, `test/jepsen`.
var repoPath = regexp.MustCompile("`((?:cmd|fsm|cluster|httpapi|client|test|deploy|docs)/[A-Za-z0-9_./-]*)`")

// TestNamedPathsExist checks that every path of the repository that
// README.md, docs/*.md and docs/adr/*.md name in a code span exists: code
// moves between packages, and a guide that points at a file that is gone
// sends the reader nowhere. Paths relative to another folder (a package
// of the fault suite named inside test/jepsen) are written whole.
func TestNamedPathsExist(t *testing.T) {
	files := docFiles(t)
	checked := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range repoPath.FindAllStringSubmatch(line, -1) {
				p := strings.TrimSuffix(m[1], "/")
				if strings.ContainsAny(p, "*") {
					continue
				}
				if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
					t.Errorf("%s:%d: `%s`: no such file or folder", filepath.Join("docs", file), i+1, m[1])
				}
				checked++
			}
		}
	}
	if checked < 50 {
		t.Errorf("%d paths checked, want at least 50: is the path reader broken?", checked)
	}
}
