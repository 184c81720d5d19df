package analyzer

// AnalyzeForcingDye is Analyze with the dyed build run whether or not
// dyeCanRoute thinks it can route anything, for tests outside the package.
func AnalyzeForcingDye(in Input) (*Plan, error) { return analyze(in, true) }
