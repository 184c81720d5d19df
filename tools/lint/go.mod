// A tools-only module: it pins the staticcheck that tools/test.sh runs.
// The product never imports it.
module github.com/driftback/driftback/tools/lint

go 1.26.8

require honnef.co/go/tools v0.8.2

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)
