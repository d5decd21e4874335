// Package whatif replays recorded runs through the stall core under other
// policies, without running a model again: the stall handler is a pure
// function over the committed log, so the recorded turns can be re-decided.
//
// The replay is exact up to the first point where a candidate would act
// differently from the recording. A candidate that stops earlier saves
// the turns after its stop; whether that stop was false (the recording
// shows the run recovering to a verified pass) or a true stall (it never
// did) is read from the recorded grade. A candidate that lets a run go on
// past the recorded stop has no recording to read: its outcome is unknown,
// and the report says so. Retries the candidate would have sent are
// charged to its repair budget as if delivered; the model's answers after
// them are the recorded ones, which answered the recorded feedback.
//
// The package does no I/O; the factline whatif command loads the runs.
package whatif
