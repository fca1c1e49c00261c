package pipeline

import (
	"fmt"
	"strconv"
)

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// FormatBytes renders a byte count in binary units for messages.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
