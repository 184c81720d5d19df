// Package targetplan owns planning one target: the render at the revision
// its GitOps tool applied, the analyzer's plan against the live objects,
// the tool's part (bot/enforce) and the edits a reviewer declined. The bot
// fills its Input from GitHub and the cluster, `driftback plan --config`
// from a checkout, so the dry run is the bot's plan.
package targetplan
