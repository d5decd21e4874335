package agentproxy

import "time"

// SetKeepAliveEvery sets the interval of an open stream's keep-alive
// lines, for a test that needs one sent without waiting KeepAliveEvery.
func (s *Server) SetKeepAliveEvery(d time.Duration) { s.keepAlive.Store(int64(d)) }
