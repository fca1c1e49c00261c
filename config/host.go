package config

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
)

// MinDefaultMemoryBudget is the least the default memory budget is, on a
// host of any size: what zspool needed before the default followed the
// host.
const MinDefaultMemoryBudget = 768 * MiB

// DefaultMemoryBudget is the memory_budget a conversion gets when none is
// given: an eighth of the memory this process may use (HostMemory), at
// least MinDefaultMemoryBudget. Several jobs at once share it.
func DefaultMemoryBudget() Size {
	n, _ := HostMemory()
	// Whole MiB, so that it reads as one in config check.
	return max(MinDefaultMemoryBudget, Size(n/8)/MiB*MiB)
}

// HostMemory is the memory this process may use, and where that figure
// comes from: the tightest memory limit of its cgroup and the cgroup's
// ancestors (v2 memory.max, v1 memory.limit_in_bytes) where one is set,
// else the machine's total RAM. 0 when none can be read.
func HostMemory() (int64, string) {
	total, _ := meminfoTotal()
	if lim, where := cgroupLimit(); lim > 0 && (total == 0 || lim < total) {
		return lim, where
	}
	if total > 0 {
		return total, "total RAM (/proc/meminfo)"
	}
	return 0, "unknown"
}

func meminfoTotal() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// cgroupLimit reads the memory limits on the path from this process's
// cgroup up to the root, and returns the tightest.
func cgroupLimit() (int64, string) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, ""
	}
	var best int64
	var where string
	consider := func(file string) {
		data, err := os.ReadFile(file)
		if err != nil {
			return
		}
		s := strings.TrimSpace(string(data))
		n, err := strconv.ParseInt(s, 10, 64)
		// "max" (v2) or a page-rounded MaxInt64 (v1) is no limit.
		if err != nil || n <= 0 || n >= 1<<60 {
			return
		}
		if best == 0 || n < best {
			best, where = n, file
		}
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var base, file string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			base, file = "/sys/fs/cgroup", "memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"): // v1
			base, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean("/" + parts[2]); ; p = path.Dir(p) {
			consider(path.Join(base, p, file))
			if p == "/" {
				break
			}
		}
	}
	return best, where
}
