// Package report renders an analyzer.Plan for people: a terminal summary
// (Text), the pull-request body (Markdown) and a git-style diff (Patch).
//
// Everything a plan carries (object names, field paths, values, messages,
// notes, file names) comes from the cluster or the repository and is
// untrusted. Text strips terminal control characters; Markdown renders it
// inert (see md); Patch quotes paths the way git does.
//
// It may import analyzer (whose Plan it prints), never bot.
package report
