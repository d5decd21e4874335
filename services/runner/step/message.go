package step

// The core cannot import the model port or the case format (see the
// package doc), so it owns the types a history is made of. Each is, field
// for field, the type the runner converts it to or from; the runner's
// TestHistoryConversionIsLossless fails when the two drift apart.

// Role is who speaks a message. The values are the model port's
// (models.Role), and the runner converts them one to one.
type Role string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the model-visible context, field for field the
// model port's message (models.Message), which the runner converts it to.
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID correlates a tool message with the call it answers.
	ToolCallID string
}

// ToolCall is one call an assistant message made, as the model port has it
// (models.ToolCall): Args is the JSON text exactly as the model wrote it.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// ContextPolicy is how much of a run the model sees, field for field the
// case's context policy (cases.ContextPolicy), which the runner converts.
type ContextPolicy struct {
	// Mode is ContextFull (everything) or ContextWindow.
	Mode string
	// WindowTurns is how many recent turns a window keeps.
	WindowTurns int
	// MaxTokens bounds the context (estimated); 0 means no bound.
	MaxTokens int
	// KeepTools lists tools whose observations a window always keeps.
	KeepTools []string
	// Summarise is the summarise mode's condenser.
	Summarise *Summarise
}

// Summarise is a condenser, field for field the case's (cases.Summarise).
type Summarise struct {
	// Model is the model name the summary is asked of ("": the treatment's).
	Model string
	// TriggerTokens fires the condenser when the context is larger; 0: never.
	TriggerTokens int
	// TriggerTurns fires it when more turns than this are not summarised
	// (past the first KeepFirst); 0: never.
	TriggerTurns int
	// KeepFirst and KeepLast are how many of the first and of the latest
	// turns stay verbatim.
	KeepFirst, KeepLast int
	// Prompt is the summariser's instruction.
	Prompt string
}

// Context modes, as a case file names them.
const (
	ContextFull      = "full"
	ContextWindow    = "window"
	ContextSummarise = "summarise"
)
