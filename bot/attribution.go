package bot

import (
	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
)

// ChangedBy says who changed an edit's field in the cluster: the field
// managers that own it in the live object read (cluster.FieldWriters),
// how they last wrote and when; "" when the object came without
// managedFields. The pull-request rows, the check run and `plan -o
// markdown` show it beside each edit.
func ChangedBy(objs []cluster.Object) func(analyzer.Edit) string {
	index := make(map[analyzer.ObjectRef]cluster.Object, len(objs))
	for _, o := range objs {
		index[analyzer.RefOf(o.Object)] = o
	}
	return func(e analyzer.Edit) string {
		o, ok := index[e.Object]
		if !ok {
			return ""
		}
		ws, err := cluster.FieldWriters(o, e.Field)
		if err != nil {
			return "" // unreadable managedFields: the plan itself said so
		}
		return cluster.WritersText(ws)
	}
}
