package sink

// NATSMsg is natsMsg: the message Send publishes for a record, without
// its Passage-Event header.
var NATSMsg = natsMsg
