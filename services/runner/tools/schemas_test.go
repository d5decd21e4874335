package tools

import (
	"encoding/json"
	"sync"
	"testing"
)

// Every attempt builds a registry: a schema compiled once in the process
// is not compiled again, so two registries hold the same compiled schema.
func TestRegistriesShareTheCompiledSchemas(t *testing.T) {
	a, err := NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range a.schemas {
		if b.schemas[name] != s {
			t.Errorf("tool %s: the second registry compiled its schema again", name)
		}
	}
}

// A schema is known by its text, not by its tool's name: a tool of the
// same name with another schema is checked against its own.
func TestASchemaIsKnownByItsTextNotItsName(t *testing.T) {
	loose, err := compileSchema("ext", json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	strict, err := compileSchema("ext", json.RawMessage(`{"type":"object","required":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if loose == strict {
		t.Fatal("two schemas of one name compiled to one")
	}
	if err := strict.Validate(map[string]any{}); err == nil {
		t.Error("the strict schema, compiled after the loose one of the same name, accepts an object without x")
	}
	if err := loose.Validate(map[string]any{}); err != nil {
		t.Errorf("the loose schema: %v", err)
	}
}

// A schema that does not compile is refused each time, never kept.
func TestASchemaThatDoesNotCompileIsRefusedEachTime(t *testing.T) {
	for range 2 {
		if _, err := compileSchema("bad", json.RawMessage(`{"type":"no such type"}`)); err == nil {
			t.Fatal("a schema of an unknown type compiled")
		}
	}
}

// Attempts running at once check calls against the shared schemas: each
// gets its own verdict (run with -race).
func TestSharedSchemasCheckCallsAtOnce(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 8 {
		wg.Go(func() {
			r, err := NewRegistry(nil)
			if err != nil {
				errs <- err.Error()
				return
			}
			for range 20 {
				if _, _, res := r.Check("read_file", `{"path":"a.txt"}`); res != nil {
					errs <- "a good read_file call refused: " + res.Output
				}
				if _, _, res := r.Check("read_file", `{"path":3}`); res == nil {
					errs <- "a read_file call with a number for a path accepted"
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func BenchmarkNewRegistry(b *testing.B) {
	for b.Loop() {
		if _, err := NewRegistry(nil); err != nil {
			b.Fatal(err)
		}
	}
}
