package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// selftestCmd checks every row of DIR/MANIFEST.tsv (tab-separated: file,
// expected verdict OK/CORRUPT, format, stored checksum, correct checksum,
// file of the hashed text, description; "-" where the kubelet cannot
// unmarshal the file) against this tool: the verdict of kubelets 1.20-1.30,
// and for files that unmarshal, both checksums and the hashed text.
func selftestCmd(args []string) int {
	if len(args) != 1 {
		usage()
	}
	dir := args[0]
	manifest := filepath.Join(dir, "MANIFEST.tsv")
	f, err := os.Open(manifest)
	if err != nil {
		fail("selftest: %v", err)
	}
	defer f.Close()
	rows, bad := 0, 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 || strings.TrimSpace(sc.Text()) == "" {
			continue // the header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 6 {
			fail("selftest: %s:%d: %d columns, want at least 6", manifest, line, len(cols))
		}
		rows++
		for _, problem := range checkRow(dir, cols) {
			fmt.Printf("%s:%d: %s: %s\n", manifest, line, cols[0], problem)
			bad++
		}
	}
	if err := sc.Err(); err != nil {
		fail("selftest: %s: %v", manifest, err)
	}
	if rows == 0 {
		fail("selftest: %s has no rows", manifest)
	}
	if bad > 0 {
		fmt.Printf("selftest: %d disagreement(s) over %d files\n", bad, rows)
		return 1
	}
	fmt.Printf("selftest: all %d files agree with %s\n", rows, manifest)
	return 0
}

// checkRow returns what disagrees between one manifest row and this tool.
func checkRow(dir string, cols []string) []string {
	file, verdict, format, stored, correct, textFile := cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
	blob, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	ok, _, reason := verify(blob, modeAuto)
	if got := map[bool]string{true: "OK", false: "CORRUPT"}[ok]; got != verdict {
		problems = append(problems, fmt.Sprintf("verdict %s, manifest says %s (%s)", got, verdict, reason))
	}
	d, err := decode(blob, format)
	if stored == "-" {
		if err == nil {
			problems = append(problems, "unmarshals, manifest says it does not")
		}
		return problems
	}
	if err != nil {
		return append(problems, fmt.Sprintf("does not unmarshal as %s: %v", format, err))
	}
	if got := strconv.FormatUint(d.stored, 10); got != stored {
		problems = append(problems, fmt.Sprintf("stored checksum %s, manifest says %s", got, stored))
	}
	if got := strconv.FormatUint(d.computed, 10); got != correct {
		problems = append(problems, fmt.Sprintf("computed checksum %s, manifest says %s", got, correct))
	}
	want, err := os.ReadFile(filepath.Join(dir, textFile))
	if err != nil {
		problems = append(problems, err.Error())
	} else if d.text != string(want) {
		problems = append(problems, fmt.Sprintf("hashed text differs from %s", textFile))
	}
	return problems
}
