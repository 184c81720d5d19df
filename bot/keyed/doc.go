// Package keyed owns what the bot remembers between polls, by target or
// repository (Map: safe for the polls of a round at once), and the
// canonical fingerprints a poll compares with the last one's.
//
// It imports no other package of bot/. Beyond bot/: `cluster`.
package keyed
