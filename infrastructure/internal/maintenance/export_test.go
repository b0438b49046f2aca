package maintenance

// CatchUp is catchUp, for the tests of the races it settles.
var CatchUp = catchUp

// SetCatchUpRounds lowers how often catchUp replays, and returns the undo.
func SetCatchUpRounds(n int) func() {
	was := catchUpRounds
	catchUpRounds = n
	return func() { catchUpRounds = was }
}

// LostRows is lostRows, for its message.
var LostRows = lostRows
