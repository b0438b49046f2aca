// Package secret takes credentials out of the URLs plan keeps or prints (database DSNs, endpoints,
// command lines) by parsing them, never by searching a message for the password's text.
//
// Invariants:
//   - URL's result carries no password in its userinfo and none of the query parameters that hold
//     or point to a credential (password, passfile, sslpassword, compared without case); everything
//     else is kept as written, so a DSN without credentials comes back unchanged;
//   - what contains "://" but does not parse as a URL is never returned: only its scheme is (as
//     "postgres URL hidden: …", which is no URL), since the parser's own complaint would quote the
//     secret;
//   - Args applies URL to every argument that holds a URL (a bare one or a --flag=URL), so a
//     command line can be recorded.
package secret

import (
	"net/url"
	"strings"
)

// credentialParams are the query parameters of a DSN that hold a credential or name a file of
// them (libpq's and pgx's names).
var credentialParams = map[string]bool{"password": true, "passfile": true, "sslpassword": true}

// hidden replaces a URL that cannot be parsed (after its scheme).
const hidden = " URL hidden: it does not parse"

// URL returns raw without the credentials it carries, and whether it carried any (or could not be
// read, which is taken to mean it might). A string that is not a URL (no "://") is returned as is.
func URL(raw string) (string, bool) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return scheme + hidden, true
	}
	had := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.User(u.User.Username())
			had = true
		}
	}
	if u.RawQuery != "" {
		var kept []string
		for _, part := range strings.Split(u.RawQuery, "&") {
			key, _, _ := strings.Cut(part, "=")
			if k, err := url.QueryUnescape(key); err == nil {
				key = k
			}
			if credentialParams[strings.ToLower(strings.TrimSpace(key))] {
				had = true
				continue
			}
			kept = append(kept, part)
		}
		u.RawQuery = strings.Join(kept, "&")
	}
	if !had {
		return raw, false
	}
	return u.String(), true
}

// Has says whether raw carries a credential URL would remove.
func Has(raw string) bool {
	_, had := URL(raw)
	return had
}

// Args returns argv with the credentials of every URL in it removed (see URL); argv is not
// changed.
func Args(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = arg(a)
	}
	return out
}

// arg redacts the URL an argument holds: the whole argument, or what follows a flag's '='.
func arg(a string) string {
	at := strings.Index(a, "://")
	if at < 0 {
		return a
	}
	start := at
	for start > 0 && schemeChar(a[start-1]) {
		start--
	}
	red, _ := URL(a[start:])
	return a[:start] + red
}

func schemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
