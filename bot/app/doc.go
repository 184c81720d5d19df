// Package app owns who this installation of the GitHub App is when it
// writes: its client, its App id and bot login (which tell its own check
// runs and commits from anyone else's), and the instance it stamps on
// every write, so two installations sharing a repository never touch each
// other's pull requests. Place is where one poll of a target writes.
package app
