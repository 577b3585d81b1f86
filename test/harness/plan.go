package harness

import "slices"

// OwnedBy returns, sorted, the keys of a placement (key to owner: a plan,
// or the holders seen) that owner has.
func OwnedBy(placement map[string]string, owner string) []string {
	var out []string
	for key, o := range placement {
		if o == owner {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}
