//go:build !darwin

package registry

// platformDataHome is the per-user data directory below HOME (the XDG Base Directory
// specification's default for XDG_DATA_HOME).
const platformDataHome = ".local/share"
