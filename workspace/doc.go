// Package workspace stores and restores content-addressed workspaces: the
// directory trees an agent's tools read and write during a run.
//
// A tree is described by a Manifest, the sorted list of its entries (regular
// files, executable files, symlinks and empty directories) with their content
// digests, link targets and sizes. The manifest's canonical encoding is
// stored as a blob next to the file contents, and the digest of that encoding
// is the workspace digest: the identity of a tree's content. Identical
// content under any label has the same digest; a renamed file, a changed
// byte, a flipped executable bit or a new symlink change it; rewriting a file
// with the same bytes or touching its times does not.
//
// Store records a directory; Materialise restores a recorded tree into a fresh
// directory, verifying every blob; a Workspace is an open working directory
// whose Refresh rescans it after a tool ran, rehashing only the files whose
// stat changed (with git's "racy" rule for changes inside one timestamp
// tick), and whose Seal makes the final tree restorable anywhere. Resolve
// confines the paths tools are given to the root, after following symlinks.
// Diff lists the paths two manifests disagree on.
//
// The package needs only a blob store (Blobs), which a bus's Blobs() satisfies. The
// formats and rules are described in docs/workspace.md.
package workspace
