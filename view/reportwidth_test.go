package view_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// At 1,400 px the suite page's report table fits its box: nothing scrolls
// sideways, so pass@k, tokens and cost (the last columns) are in view.
func TestBrowserTheReportTableFitsAt1400px(t *testing.T) {
	ctx := testCtx(t)
	_, h := serveCaughtUp(t, ctx, demo(t))
	b := tab(t)
	do(t, b, "open the suite page at 1400 px", chromedp.EmulateViewport(1400, 900), chromedp.Navigate(h.URL+"/suites/demo"),
		chromedp.WaitVisible(chromedp.CSS(`#report`)))
	type box struct{ Scroll, Client, Window, Last float64 }
	got := eval[box](t, b, `(() => {
		const box = document.querySelector('#report').parentElement;
		const last = [...document.querySelectorAll('#report tr[data-treatment] td')].pop();
		return {Scroll: box.scrollWidth, Client: box.clientWidth, Window: window.innerWidth,
			Last: last ? last.getBoundingClientRect().right : -1};
	})()`)
	if got.Window != 1400 {
		t.Fatalf("the window is %v px wide, not 1400", got.Window)
	}
	if got.Scroll > got.Client {
		t.Errorf("the report table is %v px wide in a box of %v px: it scrolls sideways, hiding its last columns", got.Scroll, got.Client)
	}
	if got.Last < 0 || got.Last > got.Window {
		t.Errorf("the table's last cell ends at %v px, outside the %v px window", got.Last, got.Window)
	}
}
