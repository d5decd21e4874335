package kit_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
	"github.com/factline/factline/services/kit"
	"github.com/factline/factline/services/kit/kittest"
)

// A service that loads runs and cases, like the staller.
var runSpec = kit.Spec{
	Owner:       events.OwnerStaller,
	Consumer:    "staller",
	Filters:     []string{events.KindFilter(events.KindTurnCompleted)},
	RunCache:    1024,
	PolicyCache: 256,
	MaxDeliver:  10,
}

// A service that folds suites, like the meter.
var suiteSpec = kit.Spec{
	Owner:          events.OwnerMeter,
	Consumer:       "meter",
	Filters:        []string{events.KindFilter(events.KindSuiteSubmitted)},
	InstancePrefix: "meter",
	SuiteCache:     64,
}

// Own settings of two services.
type judgeSettings struct{ timeout time.Duration }
type workSettings struct{ dir string }

func withTimeout(d time.Duration) kit.Option {
	return kit.Own("WithTimeout", func(j *judgeSettings) error {
		if d < 0 {
			return errors.New("the timeout is negative")
		}
		j.timeout = d
		return nil
	})
}

func newShell(t *testing.T, spec kit.Spec, opts ...kit.Option) (*kit.Shell, error) {
	t.Helper()
	b, _ := bustest.Start(t)
	return kit.New[judgeSettings](b, spec, &judgeSettings{}, opts...)
}

func TestWithInstanceRefusesAnEmptyName(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithInstance(""))
	kittest.Refused(t, err, "WithInstance")
}

func TestWithLoggerRefusesNil(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithLogger(nil))
	kittest.Refused(t, err, "WithLogger")
}

func TestWithConsumerRefusesAName(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithConsumer(bus.ConsumerConfig{Name: "mine"}))
	kittest.Refused(t, err, "WithConsumer")
}

func TestWithConsumerRefusesFilters(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithConsumer(bus.ConsumerConfig{Filters: []string{"fact.>"}}))
	kittest.Refused(t, err, "WithConsumer")
}

func TestWithConsumerRefusesNegativeNumbers(t *testing.T) {
	for name, cc := range map[string]bus.ConsumerConfig{
		"MaxDeliver":    {MaxDeliver: -1},
		"AckWait":       {AckWait: -time.Second},
		"Prefetch":      {Prefetch: -1},
		"Workers":       {Workers: -1},
		"MaxAckPending": {MaxAckPending: -1},
	} {
		_, err := newShell(t, runSpec, kit.WithConsumer(cc))
		if oe := kittest.Refused(t, err, "WithConsumer"); !strings.Contains(oe.Reason, name) {
			t.Errorf("%s: the reason %q does not name the field", name, oe.Reason)
		}
	}
}

func TestWithWorkersRefusesFewerThanOne(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := newShell(t, runSpec, kit.WithWorkers(n))
		kittest.Refused(t, err, "WithWorkers")
	}
}

func TestWithAckWaitRefusesANonPositiveWait(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := newShell(t, runSpec, kit.WithAckWait(d))
		kittest.Refused(t, err, "WithAckWait")
	}
}

func TestWithMaxDeliverRefusesFewerThanOne(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := newShell(t, runSpec, kit.WithMaxDeliver(n))
		kittest.Refused(t, err, "WithMaxDeliver")
	}
}

func TestACacheSizeBelowOneIsRefused(t *testing.T) {
	for name, o := range map[string]kit.Option{
		"WithRunCache":    kit.WithRunCache(0),
		"WithPolicyCache": kit.WithPolicyCache(-1),
	} {
		_, err := newShell(t, runSpec, o)
		kittest.Refused(t, err, name)
	}
	_, err := newShell(t, suiteSpec, kit.WithSuiteCache(0))
	kittest.Refused(t, err, "WithSuiteCache")
}

// A cache size means one thing: an option for a cache the service does
// not keep is refused, not applied to another cache.
func TestACacheTheServiceDoesNotKeepIsRefused(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithSuiteCache(8))
	if oe := kittest.Refused(t, err, "WithSuiteCache"); !strings.Contains(oe.Reason, "no suite cache") {
		t.Errorf("reason %q", oe.Reason)
	}
	for name, o := range map[string]kit.Option{"WithRunCache": kit.WithRunCache(8), "WithPolicyCache": kit.WithPolicyCache(8)} {
		_, err := newShell(t, suiteSpec, o)
		kittest.Refused(t, err, name)
	}
}

func TestAnOwnOptionAppliesToItsService(t *testing.T) {
	b, _ := bustest.Start(t)
	var own judgeSettings
	if _, err := kit.New(b, runSpec, &own, withTimeout(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if own.timeout != 3*time.Second {
		t.Errorf("timeout = %s, want 3s", own.timeout)
	}
}

func TestAnOwnOptionOfAnotherServiceIsRefused(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := kit.New(b, runSpec, &workSettings{}, withTimeout(time.Second))
	kittest.Refused(t, err, "WithTimeout")
}

func TestAnOwnOptionIsRefusedByAServiceWithoutOwnSettings(t *testing.T) {
	b, _ := bustest.Start(t)
	_, err := kit.New[struct{}](b, runSpec, nil, withTimeout(time.Second))
	kittest.Refused(t, err, "WithTimeout")
}

func TestAnOwnOptionsErrorIsAnOptionError(t *testing.T) {
	_, err := newShell(t, runSpec, withTimeout(-time.Second))
	if oe := kittest.Refused(t, err, "WithTimeout"); oe.Reason != "the timeout is negative" || oe.Service != events.OwnerStaller {
		t.Errorf("got %+v", oe)
	}
}

func TestANilOptionIsRefused(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithWorkers(2), nil)
	kittest.Refused(t, err, "nil")
}

func TestNoBusIsRefused(t *testing.T) {
	if _, err := kit.New[struct{}](nil, runSpec, nil); err == nil {
		t.Fatal("a shell without a bus was made")
	}
}

// The defaults are the Spec's: the instance name (with or without the
// service's role in front), the delivery limit, the caches kept.
func TestDefaultsAreTheSpecs(t *testing.T) {
	sh, err := newShell(t, runSpec)
	if err != nil {
		t.Fatal(err)
	}
	kittest.Defaults(t, sh, "", bus.ConsumerConfig{Name: runSpec.Consumer, Filters: runSpec.Filters, MaxDeliver: 10})
	if sh.Runs == nil || sh.Policies == nil || sh.SuiteCache != 0 {
		t.Errorf("caches: runs %v policies %v suites %d", sh.Runs, sh.Policies, sh.SuiteCache)
	}
	sh, err = newShell(t, suiteSpec)
	if err != nil {
		t.Fatal(err)
	}
	kittest.Defaults(t, sh, "meter", bus.ConsumerConfig{Name: suiteSpec.Consumer, Filters: suiteSpec.Filters})
	if sh.Runs != nil || sh.Policies != nil || sh.SuiteCache != 64 {
		t.Errorf("caches: runs %v policies %v suites %d", sh.Runs, sh.Policies, sh.SuiteCache)
	}
}

func TestOptionsOverrideTheSpec(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	sh, err := newShell(t, suiteSpec, kit.WithInstance("m-1"), kit.WithLogger(log), kit.WithSuiteCache(3),
		kit.WithConsumer(bus.ConsumerConfig{Prefetch: 2}), kit.WithWorkers(4), kit.WithAckWait(time.Second), kit.WithMaxDeliver(7))
	if err != nil {
		t.Fatal(err)
	}
	c := sh.Consumer()
	if sh.Instance != "m-1" || sh.SuiteCache != 3 || c.Prefetch != 2 || c.Workers != 4 || c.AckWait != time.Second || c.MaxDeliver != 7 {
		t.Errorf("instance %q suites %d consumer %+v", sh.Instance, sh.SuiteCache, c)
	}
}

// The consumer's name and filters are the service's, and a service that
// pulls on demand does so whatever the options say.
func TestTheConsumerIsTheServices(t *testing.T) {
	spec := runSpec
	spec.OnDemand = true
	sh, err := newShell(t, spec, kit.WithConsumer(bus.ConsumerConfig{Workers: 2}))
	if err != nil {
		t.Fatal(err)
	}
	c := sh.Consumer()
	if c.Name != "staller" || len(c.Filters) != 1 || c.Filters[0] != spec.Filters[0] || !c.OnDemand || c.Workers != 2 {
		t.Errorf("consumer %+v", c)
	}
}

// A service's default workers apply when the options name none, the
// options' win otherwise, and a service that orders by run does so
// whatever the options say.
func TestTheServicesWorkersAndOrderByRun(t *testing.T) {
	spec := runSpec
	spec.Workers, spec.OrderByRun = 16, true
	for _, tc := range []struct {
		opts []kit.Option
		want int
	}{
		{nil, 16},
		{[]kit.Option{kit.WithWorkers(3)}, 3},
		{[]kit.Option{kit.WithConsumer(bus.ConsumerConfig{AckWait: time.Second})}, 16},
		{[]kit.Option{kit.WithConsumer(bus.ConsumerConfig{Workers: 2})}, 2},
	} {
		sh, err := newShell(t, spec, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if c := sh.Consumer(); c.Workers != tc.want || !c.OrderByRun {
			t.Errorf("workers %d order by run %v, want %d and true", c.Workers, c.OrderByRun, tc.want)
		}
	}
}

// An instance is named after its host and process, with the service's
// role in front when it has one; operators read the process back from
// the last field.
func TestLocalInstanceEndsWithTheProcess(t *testing.T) {
	pid := "-" + strconv.Itoa(os.Getpid())
	for prefix, start := range map[string]string{"": "", "meter": "meter-"} {
		name := kit.LocalInstance(prefix)
		if !strings.HasPrefix(name, start) || !strings.HasSuffix(name, pid) || len(name) <= len(start)+len(pid)+1 {
			t.Errorf("LocalInstance(%q) = %q, want %s<host>%s", prefix, name, start, pid)
		}
	}
}

// A service that keeps the runs it drives, like the runner.
var perWorkerSpec = kit.Spec{
	Owner:             events.OwnerRunner,
	Consumer:          "runner",
	Filters:           []string{events.KindFilter(events.KindRunRequested)},
	InstancePrefix:    "runner",
	RunCachePerWorker: 4,
	OnDemand:          true,
}

// A run cache sized per worker grows with the workers unless an option
// sizes it; the sizes of the services with a fixed cache stay fixed.
func TestARunCachePerWorkerFollowsTheWorkers(t *testing.T) {
	for _, c := range []struct {
		spec kit.Spec
		opts []kit.Option
		want int
	}{
		{perWorkerSpec, nil, 4},
		{perWorkerSpec, []kit.Option{kit.WithWorkers(3)}, 12},
		{perWorkerSpec, []kit.Option{kit.WithConsumer(bus.ConsumerConfig{Workers: 2})}, 8},
		{perWorkerSpec, []kit.Option{kit.WithWorkers(3), kit.WithRunCache(5)}, 5},
		{runSpec, []kit.Option{kit.WithWorkers(3)}, 1024},
		{suiteSpec, nil, 0},
	} {
		sh, err := newShell(t, c.spec, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := sh.RunCacheSize(); got != c.want || (got > 0) != (sh.Runs != nil) {
			t.Errorf("%s with %d options: run cache %d (kept %v), want %d", c.spec.Owner, len(c.opts), got, sh.Runs != nil, c.want)
		}
	}
}

func TestWithRunCacheRefusesBelowOneForAPerWorkerCache(t *testing.T) {
	_, err := newShell(t, perWorkerSpec, kit.WithRunCache(0))
	kittest.Refused(t, err, "WithRunCache")
}

// What becomes of a dead letter is the service's (the runner ends the
// run): a caller's consumer settings may not replace it.
func TestWithConsumerRefusesOnDeadLetter(t *testing.T) {
	_, err := newShell(t, runSpec, kit.WithConsumer(bus.ConsumerConfig{
		OnDeadLetter: func(context.Context, bus.Delivery, string) error { return nil }}))
	if oe := kittest.Refused(t, err, "WithConsumer"); !strings.Contains(oe.Reason, "OnDeadLetter") {
		t.Errorf("the reason %q does not name the field", oe.Reason)
	}
}

func TestOnDeadLetterIsTheConsumers(t *testing.T) {
	sh, err := newShell(t, perWorkerSpec)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Consumer().OnDeadLetter != nil {
		t.Fatal("a dead-letter callback nobody set")
	}
	sh.OnDeadLetter(func(context.Context, bus.Delivery, string) error { return nil })
	if sh.Consumer().OnDeadLetter == nil {
		t.Fatal("the callback is not the consumer's")
	}
}

// The service and instance attributes of the shell's log pass through a
// wrapped handler too, as if it had been given the logger itself.
func TestWrapLogWrapsTheServiceAttributes(t *testing.T) {
	var out strings.Builder
	sh, err := newShell(t, perWorkerSpec, kit.WithInstance("secret-name"),
		kit.WithLogger(slog.New(slog.NewTextHandler(&out, nil))))
	if err != nil {
		t.Fatal(err)
	}
	sh.WrapLog(func(h slog.Handler) slog.Handler { return hiding{h} })
	sh.Log.Info("hello secret")
	if got := out.String(); strings.Contains(got, "secret") || !strings.Contains(got, "service=runner") || !strings.Contains(got, "instance=XXX-name") {
		t.Errorf("logged %q", got)
	}
}

// hiding replaces "secret" in messages and string attributes.
type hiding struct{ slog.Handler }

func (h hiding) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, strings.ReplaceAll(r.Message, "secret", "XXX"), r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(hide(a)); return true })
	return h.Handler.Handle(ctx, out)
}

func (h hiding) WithAttrs(as []slog.Attr) slog.Handler {
	for i := range as {
		as[i] = hide(as[i])
	}
	return hiding{h.Handler.WithAttrs(as)}
}

func hide(a slog.Attr) slog.Attr {
	return slog.String(a.Key, strings.ReplaceAll(a.Value.String(), "secret", "XXX"))
}

func withDir(dir string) kit.Option {
	return kit.OwnIf("WithDir", dir != "", "the directory is empty", func(w *workSettings) { w.dir = dir })
}

func TestAnOwnIfOptionSetsAValidValue(t *testing.T) {
	b, _ := bustest.Start(t)
	var own workSettings
	if _, err := kit.New(b, runSpec, &own, withDir("/tmp/x")); err != nil {
		t.Fatal(err)
	}
	if own.dir != "/tmp/x" {
		t.Errorf("dir = %q, want /tmp/x", own.dir)
	}
}

func TestAnOwnIfOptionRefusesAnInvalidValueForItsReason(t *testing.T) {
	b, _ := bustest.Start(t)
	own := workSettings{dir: "kept"}
	_, err := kit.New(b, runSpec, &own, withDir(""))
	if oe := kittest.Refused(t, err, "WithDir"); oe.Reason != "the directory is empty" {
		t.Errorf("got %+v", oe)
	}
	if own.dir != "kept" {
		t.Errorf("a refused option set dir to %q", own.dir)
	}
}

func TestAnOwnIfOptionOfAnotherServiceIsRefused(t *testing.T) {
	_, err := newShell(t, runSpec, withDir("/tmp/x"))
	kittest.Refused(t, err, "WithDir")
}
