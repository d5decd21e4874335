package measure

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/factline/factline/events"
)

// A child run is part of its parent's attempt: never an attempt of the
// suite (the report counts the planned attempts only), and its usage is
// reported apart from the parent's own and with it, each reply counted
// once: the row's tokens (the parent's spent, which charged the child)
// are the parent's replies and the child's together, and its split adds
// up.
func TestAChildsUsageIsItsParentsShownApartAndNeverAnAttempt(t *testing.T) {
	l := newSuite(t, submitted([]string{"c1"}, []string{"A"}, 1))
	m := l.member("c1", "A", 1)
	child := m.Run + "-d1-ask"
	// The parent: 110 own tokens (cost 3), and the child's 66 (cost 3).
	l.attempt("c1", "A", 1, events.RunDone, u64(110+66), pass)
	l.add(m.Run, events.ModelReplied{Turn: 1, Provider: "p", Usage: &events.Usage{InputTokens: 100, OutputTokens: 10, Cost: u64(3)}}, events.OwnerRunner)
	l.add(child, events.RunDelegated{Request: events.RunRequested{Case: "c1", CaseDigest: d("child"), Treatment: "A", TreatmentDigest: d("treatment:A"), Trial: 1},
		Parent: events.ParentRef{Run: m.Run, Turn: 1, CallID: "ask", OperationID: m.Run + "/t1/ask"}}, events.OwnerRunner)
	l.add(child, events.RunClaimed{Runner: "r", Lease: 1}, events.OwnerRunner)
	l.add(child, events.ModelReplied{Turn: 1, Provider: "p", Usage: &events.Usage{InputTokens: 50, OutputTokens: 5, Cost: u64(1)}}, events.OwnerRunner)
	l.add(child, events.ModelReplied{Turn: 2, Provider: "p", Usage: &events.Usage{InputTokens: 10, OutputTokens: 1, Cost: u64(2)}}, events.OwnerRunner)
	l.add(child, events.RunEnded{Status: events.RunDone, Reason: "done", Spent: events.Spent{Steps: 2, Tokens: u64(66), Cost: u64(3)}}, events.OwnerRunner)
	r := l.report()
	if len(r.Attempts) != 1 || r.Treatments[0].Ended != 1 || r.Treatments[0].Planned != 1 {
		t.Fatalf("the child counted as an attempt: %d attempts, %+v", len(r.Attempts), r.Treatments[0])
	}
	row := r.Attempts[0]
	dl := row.Delegation
	if dl == nil || dl.Children != 1 || *dl.OwnTokens != 110 || *dl.ChildTokens != 66 || *dl.OwnCost != 3 || *dl.ChildCost != 3 {
		t.Fatalf("the row's delegation: %+v", dl)
	}
	if row.Tokens == nil || *row.Tokens != *dl.OwnTokens+*dl.ChildTokens || row.InputTokens == nil || *row.InputTokens != 160 || *row.OutputTokens != 16 {
		t.Fatalf("the row's tokens and split: %+v", row)
	}
	td := r.Treatments[0].Delegation
	if td == nil || td.Children != 1 || *td.OwnTokens != 110 || *td.ChildTokens != 66 {
		t.Fatalf("the treatment's delegation: %+v", td)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Treatments []struct {
			Delegation *DelegationUsage `json:"delegation"`
		} `json:"treatments"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Treatments[0].Delegation == nil || *back.Treatments[0].Delegation.ChildTokens != 66 {
		t.Fatalf("the JSON's delegation: %v %s", err, js.String())
	}
	var txt bytes.Buffer
	if err := WriteTable(&txt, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(txt.String()), " "), "delegated to 1 child runs (part of the usage): tokens 110 own + 66 children, cost units 3 own + 3 children") {
		t.Fatalf("the table does not show the delegation:\n%s", txt.String())
	}
}
