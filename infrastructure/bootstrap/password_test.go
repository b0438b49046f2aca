package bootstrap

import "testing"

// PGPASSWORD completes a PostgreSQL DSN that names a user but no password; it never replaces a
// password the DSN carries, and touches nothing else.
func TestWithPassword(t *testing.T) {
	env := func(k string) string {
		if k == "PGPASSWORD" {
			return "s3cr3t"
		}
		return ""
	}
	for in, want := range map[string]string{
		"postgres://plan@db:5432/plan":          "postgres://plan:s3cr3t@db:5432/plan",
		"postgresql://plan@db/plan?sslmode=off": "postgresql://plan:s3cr3t@db/plan?sslmode=off",
		"postgres://plan:given@db/plan":         "postgres://plan:given@db/plan",
		"postgres://db/plan":                    "postgres://db/plan", // no user: libpq's defaults apply
		"sqlite:///srv/meta.db":                 "sqlite:///srv/meta.db",
		"/work/.plan/plan.db":                   "/work/.plan/plan.db",
	} {
		if got := withPassword(in, env); got != want {
			t.Errorf("withPassword(%q) = %q, want %q", in, got, want)
		}
	}
	if got := withPassword("postgres://plan@db/plan", func(string) string { return "" }); got != "postgres://plan@db/plan" {
		t.Errorf("without PGPASSWORD: %q", got)
	}
}
