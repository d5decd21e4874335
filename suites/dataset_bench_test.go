package suites

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
)

// benchDataset writes a JSONL dataset of n records and a suite that takes
// them through a template (with sample, when given, a sample of that many).
func benchDataset(b *testing.B, n int, sample string) string {
	b.Helper()
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "d.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		fmt.Fprintf(f, "{\"id\": \"q%06d\", \"question\": \"What is %d + %d? Answer: digits only.\", \"answer\": %d}\n", i, i, i, 2*i)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "fixture"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "fixture", "README"), []byte("answer the question\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "case.tmpl"), []byte("id: {{.case_id}}\ninstruction: {{yaml .question}}\nfixture: fixture\n"+
		"grading:\n  instruments:\n    - {id: answer, kind: file, path: answer.txt, contains: {{yaml .answer}}}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "t.yaml"), []byte("id: t\nmodel: {provider: openai, name: m, base_url: 'http://127.0.0.1:1/v1'}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte("name: big\ndataset:\n  path: d.jsonl\n  template: case.tmpl\n  id: id\n"+sample+
		"treatments: [{path: t.yaml}]\n"), 0o644))
	return filepath.Join(dir, "suite.yaml")
}

// Loading, publishing and submitting a suite of 5,000 dataset records on a
// real embedded server (fsync always), the way factline run does before
// its services take over.
func BenchmarkDatasetSubmit5000(b *testing.B) {
	path := benchDataset(b, 5000, "")
	srv, _ := bustest.Start(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		s.File.Name = fmt.Sprintf("big%d", i)
		p, err := Publish(ctx, srv.Blobs(), s)
		if err != nil {
			b.Fatal(err)
		}
		if err := Submit(ctx, srv, p, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(5000*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// A sample of 100 records holds 100 cases whatever the size of the file:
// the heap after loading stays flat as the file grows tenfold.
func BenchmarkDatasetSampleHeap(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			path := benchDataset(b, n, "  sample: {n: 100, seed: 1}\n")
			var kept *Suite
			var heap uint64
			for i := 0; i < b.N; i++ {
				s, err := Load(path)
				if err != nil {
					b.Fatal(err)
				}
				kept = s
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = ms.HeapAlloc
			}
			if len(kept.Cases) != 100 {
				b.Fatalf("%d cases, want 100", len(kept.Cases))
			}
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
		})
	}
}
