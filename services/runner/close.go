package runner

import "os"

// An attempt owns what it opens: its directory under the work dir (its
// workspace, HOME and TMPDIR, its extensions' logs), its sandbox (a
// container when the case names an environment) and its extension
// servers. prepare closes them all when it fails after opening the first;
// handle releases the processes when the run's loop ends, before the
// candidate is sealed, and closes the rest when it returns.

// release ends what the attempt runs: its extension servers, then its
// container. None outlives the run's ending; releasing again does
// nothing.
func (a *attempt) release() {
	a.exts.Stop()
	a.closeSandbox()
}

// close releases the attempt and removes its directory (the container
// goes before the directories it mounts): nothing it opened is left.
// Closing again does nothing.
func (a *attempt) close() {
	a.release()
	if a.dir == "" {
		return
	}
	if err := os.RemoveAll(a.dir); err != nil {
		a.svc.log.Warn("removing the attempt's directory failed", "suite", a.suite, "run", a.run, "dir", a.dir, "err", err)
	}
	a.dir = ""
}
