package zstdlit

import (
	"os"
	"strconv"
)

var expMMB = func() int { v, _ := strconv.Atoi(os.Getenv("ZL_MMB")); return v }()

var expLong = os.Getenv("ZL_LONG") == "1"
