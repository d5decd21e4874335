// Command nkeygen makes an nkey user for a factline role: it writes the
// seed (the secret) to a file only its owner can read and prints the public
// key, the line to put in the server configuration, and the flag to give
// the service. nats-server itself only ever sees the public key.
//
//	go run ./ops/nats/nkeygen -role runner -out /run/secrets/runner.nk
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/nkeys"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "nkeygen:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nkeygen", flag.ContinueOnError)
	role := fs.String("role", "", "the role the user plays: runner, staller, decider, grader, meter, submitter, ops, analyst or admin")
	path := fs.String("out", "", "file to write the seed to (created, mode 0600; never overwritten)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *role == "" || *path == "" {
		return errors.New("give -role and -out")
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return fmt.Errorf("create nkey: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return fmt.Errorf("public key: %w", err)
	}
	f, err := os.OpenFile(*path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("seed file: %w", err)
	}
	_, err = f.Write(append(seed, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("seed file %s: %w", *path, err)
	}
	fmt.Fprintf(out, "public key: %s\n", pub)
	fmt.Fprintf(out, "server configuration (users of the account):\n  {nkey: %s, permissions: $%s}\n", pub, strings.ToUpper(*role))
	fmt.Fprintf(out, "service flag: --nkey %s\n", *path)
	return nil
}
