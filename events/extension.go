package events

// Extension is what a runner admitted of one extension (a tool server
// outside the runner, e.g. an MCP server over stdio) for a run: where it
// came from (the allowlisted command, arguments and executable digest),
// what it said it is (the server's own name and version), and the
// capabilities the allowlist let it offer. The allowlist, not the server,
// decides each tool's effect class and approval rule.
type Extension struct {
	// Name is the allowlist entry a case names.
	Name string `msgpack:"name" json:"name"`
	// Command and Args are the pinned command line.
	Command string   `msgpack:"command" json:"command"`
	Args    []string `msgpack:"args,omitempty" json:"args,omitempty"`
	// Executable is the digest of the executable file as it was checked
	// right before it started.
	Executable Digest `msgpack:"executable" json:"executable"`
	// Server and Version are the implementation name and version the server
	// reported when the session was initialised (untrusted, but recorded).
	Server  string `msgpack:"server,omitempty" json:"server,omitempty"`
	Version string `msgpack:"version,omitempty" json:"version,omitempty"`
	// Protocol is the protocol version the session negotiated.
	Protocol string `msgpack:"protocol,omitempty" json:"protocol,omitempty"`
	// Tools are the capabilities exposed to the model: offered by the
	// server and allowlisted.
	Tools []ExtensionTool `msgpack:"tools,omitempty" json:"tools,omitempty"`
	// Withheld names tools the server offered that the allowlist does not
	// list; the model never sees them.
	Withheld []string `msgpack:"withheld,omitempty" json:"withheld,omitempty"`
}

// ExtensionTool is one capability an extension exposes, as the allowlist
// classifies it.
type ExtensionTool struct {
	// Name is the tool's name on the server; the model calls it as
	// <extension>__<name>.
	Name string `msgpack:"name" json:"name"`
	// Effect is the allowlist's effect class.
	Effect EffectClass `msgpack:"effect" json:"effect"`
	// Approval is the allowlist's approval rule: "never" or "always".
	Approval string `msgpack:"approval" json:"approval"`
}

// Approval rules of an extension tool.
const (
	ApprovalNever  = "never"
	ApprovalAlways = "always"
)

var approvalRules = []string{ApprovalNever, ApprovalAlways}

func (e Extension) validate(p string) error {
	if err := needString(p, "name", e.Name); err != nil {
		return err
	}
	if err := needString(p, "command", e.Command); err != nil {
		return err
	}
	if err := needDigest(p, "executable", e.Executable); err != nil {
		return err
	}
	if err := each(p, "tools", e.Tools); err != nil {
		return err
	}
	return eachString(p, "withheld", e.Withheld)
}

func (t ExtensionTool) validate(p string) error {
	if err := needString(p, "name", t.Name); err != nil {
		return err
	}
	if err := needOneOf(p, "effect", t.Effect, effectClasses); err != nil {
		return err
	}
	return needOneOf(p, "approval", t.Approval, approvalRules)
}
