package kernel

import "testing"

// The recovery message names a few of the paths it recorded, and counts the rest.
func TestSummarizePaths(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"},
	} {
		if got := summarizePaths(c.paths); got != c.want {
			t.Errorf("%v: %q, want %q", c.paths, got, c.want)
		}
	}
}
