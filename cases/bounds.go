package cases

// Bounds of the files a case is made of (docs/case.md#bounds). Each is
// refused, naming the file, the field and the limit, before it can cost
// more than a small multiple of itself in memory.
const (
	// MaxFileBytes bounds a case or treatment file.
	MaxFileBytes = 1 << 20
	// MaxInstruction bounds a case's instruction, in bytes: it is sent to
	// the model with every turn.
	MaxInstruction = 256 << 10
	// MaxScriptBytes bounds one script of a scripted treatment.
	MaxScriptBytes = 1 << 20
	// MaxScriptsBytes bounds all the scripts of one treatment together:
	// they travel inside the treatment, which every runner reads.
	MaxScriptsBytes = 16 << 20
	// MaxScripts bounds the scripts of one treatment.
	MaxScripts = 10_000
)
