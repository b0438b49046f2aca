package registry

// platformDataHome is the per-user data directory below HOME (Apple's File System Programming
// Guide: Application Support).
const platformDataHome = "Library/Application Support"
