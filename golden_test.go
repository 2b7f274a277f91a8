package informer

import "flag"

// update makes golden-file tests rewrite their expected output instead of
// comparing against it: go test -run NAME -update.
var update = flag.Bool("update", false, "rewrite the expected output of golden tests")
