// Package bus is factline's only door to NATS JetStream besides the service
// shells: an embedded server (or a connection to an external one), the
// streams and buckets the log needs, appends with run-wide optimistic
// concurrency, fast loading of one run's facts, consumer helpers with
// dead-lettering, and content-addressed blobs.
//
// Streams:
//
//	FACTS    file storage, subjects fact.>, limits retention, dedup window
//	CONTROL  memory storage, subjects ctl.> and status.>, short MaxAge
//	DEAD     file storage, subjects dead.>: messages a consumer could not use
//
// Buckets: the object store BLOBS (large payloads named by digest) and the
// key-value buckets POSITIONS (durable replay positions of projections) and
// LIMITS (model limits the runners share: leased slots, request tokens,
// adaptive state; slots.go).
package bus
