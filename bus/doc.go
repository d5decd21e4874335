// Package bus is factline's only door to NATS JetStream: no service,
// core, projection or library outside bus/ imports nats.go (the binaries
// in cmd/ wire connections and credentials, bench/ measures raw JetStream
// beside factline; guard_test.go keeps it so). It holds an embedded
// server and the one way a process opens a store directory
// (OpenEmbedded: the store's lock, the holder's record, taking a store
// over), a connection to an external cluster (Dial, Open), the streams
// and buckets the log needs, appends with run-wide optimistic
// concurrency, fast loading of one run's facts, consumer helpers with
// dead-lettering, and content-addressed blobs.
//
// Streams:
//
//	FACTS    file storage, subjects fact.>, limits retention, dedup window
//	CONTROL  file storage flushed asynchronously, subjects ctl.> and
//	         status.>, short MaxAge (controlstream.go)
//	DEAD     file storage, subjects dead.>: messages a consumer could not use
//
// Buckets: the object store BLOBS (large payloads named by digest, some
// stored as deltas of an earlier version; blobdeltas.go) and the
// key-value buckets POSITIONS (durable replay positions of projections),
// LIMITS (model limits the runners share: leased slots, request tokens,
// adaptive state; slots.go) and CACHE (the response cache: a model and
// request digest to the blob of a reply; cache.go, opened on first use).
//
// Three things keep bytes or logs in memory and are not the CACHE bucket:
// RunLogs (recently loaded run logs of one service, Bus.NewRunLogs; the
// kit calls it a service's run cache), the blobs a bus
// rebuilt from deltas, and the viewer's blobs (internal/bytecache).
package bus
