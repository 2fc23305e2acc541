package pgwire_test

import "os"

func filepathTemp() (string, error) { return os.MkdirTemp("", "tandem-fuzz") }
