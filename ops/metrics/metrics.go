// Package metrics holds factline's Prometheus metrics, one registry for a
// process, and the HTTP handler that serves them with a health check. Names
// follow Prometheus conventions (factline_…_total, _seconds, base units);
// labels are bounded sets (kinds, consumers, tools, providers, statuses),
// never run or suite IDs.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is the process's registry; every factline metric is in it.
var Registry = prometheus.NewRegistry()

// declared lists every metric name this package defines, for checks of
// dashboards and alerts.
var declared []string

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	declared = append(declared, name)
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	Registry.MustRegister(c)
	return c
}

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	declared = append(declared, name)
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	Registry.MustRegister(h)
	return h
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	declared = append(declared, name)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	Registry.MustRegister(g)
	return g
}

var fast = prometheus.ExponentialBuckets(0.0005, 2, 14) // 0.5 ms … 4 s
var slow = prometheus.ExponentialBuckets(0.05, 2, 14)   // 50 ms … 7 min

// toolBuckets span a file read (a millisecond) to the longest command a
// tool runs (600 s): checks alone run up to 30 s by default.
var toolBuckets = prometheus.ExponentialBuckets(0.001, 2, 21) // 1 ms … 17 min

// The bus.
var (
	FactsAppended   = counter("factline_facts_appended_total", "Facts committed to the log, by kind.", "kind")
	AppendSeconds   = histogram("factline_append_duration_seconds", "Time to commit one fact (publish until acknowledged).", fast)
	AppendConflicts = counter("factline_append_conflicts_total", "Appends refused because another writer extended the run first.")
	FactsConsumed   = counter("factline_facts_consumed_total", "Facts handled by a consumer, by consumer and kind.", "consumer", "kind")
	Redeliveries    = counter("factline_redeliveries_total", "Deliveries of a message that had been delivered before, by consumer.", "consumer")
	DeadLetters     = counter("factline_dead_letters_total", "Messages a consumer gave up on and moved to the DEAD stream, by consumer.", "consumer")
	ConsumerPending = gauge("factline_consumer_pending_messages", "Messages waiting for a consumer (its lag), as the server reported it at the last delivery or at most a third of the ack wait (10 s) ago.", "consumer")
	// The bus itself failing: work is held, never acknowledged or dead-lettered for it.
	StoreFull     = gauge("factline_bus_store_full", "1 while JetStream refuses this process's writes for want of space (until a write succeeds), else 0.")
	StreamMissing = gauge("factline_bus_stream_missing", "1 while a stream this process needs is missing and it may not (or will not) create it, by stream.", "stream")
	InfraRetries  = counter("factline_bus_infra_retries_total", "Deliveries tried again in place because the bus itself failed (store full, stream missing, server unavailable), by consumer and cause; they spend no delivery budget.", "consumer", "cause")
)

// The runner.
var (
	RunsInFlight   = gauge("factline_runner_runs_in_flight", "Runs a runner process is driving now.")
	RunsEnded      = counter("factline_runs_ended_total", "Runs ended, by status.", "status")
	ModelSeconds   = histogram("factline_model_call_duration_seconds", "Model call latency, by provider.", slow, "provider")
	ModelTokens    = counter("factline_model_tokens_total", "Tokens the providers reported, by provider and direction (input, output).", "provider", "direction")
	ModelUnknown   = counter("factline_model_usage_unknown_total", "Replies that came without usage, by provider (counted apart, never as zero).", "provider")
	ModelErrors    = counter("factline_model_errors_total", "Model calls that failed, by provider and error kind.", "provider", "kind")
	ModelCache     = counter("factline_model_cache_total", "Response cache lookups of treatments that read the cache, by provider and result (hit; miss; refused: an entry that did not verify, or whose reply is not the one the log committed at the call it cites; the model was called instead).", "provider", "result")
	ToolSeconds    = histogram("factline_tool_dispatch_duration_seconds", "Tool run time, by tool.", toolBuckets, "tool")
	ToolDispatches = counter("factline_tool_dispatches_total", "Settled tool calls, by tool and disposition.", "tool", "disposition")
	AgentRefused   = counter("factline_agent_requests_refused_total", "Requests of external agents their attempt's endpoint refused as invalid (a history the wire's provider would refuse, a body too large): answered 400 or 413, no turn, nothing committed.")
)

// waitBuckets span no wait at all to a provider that stays overloaded for
// minutes.
var waitBuckets = prometheus.ExponentialBuckets(0.01, 2, 16) // 10 ms … 5.5 min

// Fleet-wide model limits (models/limit), as one runner process sees them;
// the limit label is the provider, endpoint and model.
var (
	LimitSlotsHeld = gauge("factline_model_limit_slots_held", "Slots of a fleet-wide model limit this process holds now, by limit (sum over processes: slots in use).", "limit")
	LimitWait      = histogram("factline_model_limit_wait_seconds", "Time a model call waited for a fleet-wide limit's slot and token before it was sent, by limit.", waitBuckets, "limit")
	LimitAdaptive  = gauge("factline_model_limit_concurrency", "A fleet-wide limit's adaptive concurrency, as this process last read or set it, by limit.", "limit")
	LimitThrottled = counter("factline_model_throttled_total", "Model call attempts a provider throttled (HTTP 429 or 503), by limit and status.", "limit", "status")
)

// The stall handler and the stop decider.
var (
	StallActions = counter("factline_stall_actions_total", "Stall observations, by action (none, retry, escalate, stop).", "action")
	Decisions    = counter("factline_decisions_total", "Stop decisions, by result (continue, done, blocked, incomplete).", "result")
)

// The grader.
var (
	GradingSeconds = histogram("factline_grading_duration_seconds", "Time to grade one sealed candidate.", slow)
	Verdicts       = counter("factline_verdicts_total", "Grade verdicts, by result.", "result")
)

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler serves /metrics and /healthz. health reports an error when the
// process cannot serve (e.g. its NATS connection is down).
func Handler(health func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	return mux
}
