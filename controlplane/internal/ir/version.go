package ir

import "sync/atomic"

// versions hands out host versions: one counter for the process, so that
// no two stamps anywhere give the same version (a per-builder counter
// would repeat across memos sharing one translator cache).
var versions atomic.Uint64

// Stamp gives v a version no other stamp gave: while v is not modified
// (a model is never modified once built), a host with v's FQDN and
// version has v's content, so translator.Cache keys v's translation by
// that instead of comparing (docs/design/caches.md). Stamp v once it is
// complete and before anyone reads it. Hosts never stamped have version
// 0, compared by content.
func (v *VirtualHost) Stamp() { v.version = versions.Add(1) }

// Version is v's version (see Stamp), 0 when v was never stamped.
func (v *VirtualHost) Version() uint64 { return v.version }

// Unversioned is v without its version: its content, for comparing two
// hosts whose versions differ (the same content built twice).
func (v VirtualHost) Unversioned() VirtualHost {
	v.version = 0
	return v
}

// Unversioned is v without its version (see VirtualHost.Unversioned).
func (v SecureVirtualHost) Unversioned() SecureVirtualHost {
	v.version = 0
	return v
}
