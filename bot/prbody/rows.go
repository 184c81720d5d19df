package prbody

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// EditRows groups a plan's edits into the rows a reviewer keeps or
// declines: edits written to one line of one file (an images: or
// replicas: entry, a labels: value, a substitution variable, a generator
// literal) and edits written to one patch file are one row, so declining a
// row never leaves half of a shared entry in the branch. Rows keep the
// plan's order.
func EditRows(target string, plan *analyzer.Plan) []report.EditRow {
	if plan == nil {
		return nil
	}
	group := map[string]int{} // place → row
	var rows []report.EditRow
	for _, e := range plan.Edits {
		place := e.File + "\x00" + placeLine(e)
		i, ok := group[place]
		if !ok || e.File == "" {
			i = len(rows)
			rows = append(rows, report.EditRow{})
			group[place] = i
		}
		rows[i].Edits = append(rows[i].Edits, e)
	}
	for i := range rows {
		rows[i].Key = RowKey(target, rows[i].Edits)
	}
	return rows
}

// placeLine is where in its file an edit lands, as far as sharing goes: a
// patch (or an override's patch file) is one place whatever its lines; an
// edit without a line is the whole file.
func placeLine(e analyzer.Edit) string {
	if e.Route == analyzer.RoutePatch || e.Route == analyzer.RouteOverlay || e.Line <= 0 {
		return "file"
	}
	return strconv.Itoa(e.Line)
}

// RowKey names a row by the target and, for each edit, the object, the
// field and a hash of the live value: stable across polls and processes
// while the cluster holds the same values, new as soon as one changes.
func RowKey(target string, edits []analyzer.Edit) string {
	parts := make([]string, len(edits))
	for i, e := range edits {
		v := sha256.Sum256([]byte(jsonvalue.Canonical(e.To)))
		o := e.Object
		parts[i] = o.APIVersion + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name + "\x00" + e.Field + "\x00" + hex.EncodeToString(v[:])
	}
	sort.Strings(parts)
	h := sha256.New()
	h.Write([]byte(target))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// EditsOf counts the edits of rows.
func EditsOf(rows []report.EditRow) int {
	n := 0
	for _, r := range rows {
		n += len(r.Edits)
	}
	return n
}
