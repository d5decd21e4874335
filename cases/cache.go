package cases

// Cache is a treatment's response cache: whether a model call whose
// rendered request an earlier call of the same model identity already sent
// takes that call's reply instead of calling the model (docs/models.md).
type Cache struct {
	// Mode is CacheReadWrite, CacheRead or CacheOff.
	Mode string `yaml:"mode" json:"mode"`
}

// Response cache modes.
const (
	// CacheReadWrite answers from the cache when it can and stores every
	// reply the model gives.
	CacheReadWrite = "read_write"
	// CacheRead answers from the cache when it can and stores nothing:
	// a run that must not change what later runs are served.
	CacheRead = "read"
	// CacheOff neither reads nor writes: every call goes to the model.
	CacheOff = "off"
)

// CacheMode is the treatment's cache mode, CacheOff when it names none.
func (t *Treatment) CacheMode() string {
	if t == nil || t.Cache == nil {
		return CacheOff
	}
	return t.Cache.Mode
}

// CacheReads reports whether calls look in the cache before the model.
func (t *Treatment) CacheReads() bool {
	m := t.CacheMode()
	return m == CacheRead || m == CacheReadWrite
}

// CacheWrites reports whether the model's replies are stored in the cache.
func (t *Treatment) CacheWrites() bool { return t.CacheMode() == CacheReadWrite }

func (c *Cache) check(field string) error {
	if c == nil {
		return nil
	}
	switch c.Mode {
	case CacheReadWrite, CacheRead, CacheOff:
		return nil
	case "":
		return fieldErr(field+".mode", "required (%s, %s or %s)", CacheReadWrite, CacheRead, CacheOff)
	}
	return fieldErr(field+".mode", "unknown cache mode %q (want %s, %s or %s)", c.Mode, CacheReadWrite, CacheRead, CacheOff)
}
