// checksum-oracle: the device-manager checkpoint (kubelet_internal_checkpoint)
// as the kubelet's own code reads, checks and writes it. devmgr's tests and
// `make bench` compare devmgr with it; see README.md beside this file.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

const usageText = `checksum-oracle: the kubelet's device-manager checkpoint, by the kubelet's own code
(k8s.io/kubernetes pkg/kubelet/cm/devicemanager/checkpoint at the pinned release).

usage:
  checksum-oracle verify   [--format auto|v1|v2] FILE...
      The kubelet's verdict on each file: OK or CORRUPT and the reason. auto reads
      as kubelets 1.20-1.30 did (V2, and V1 when V2 fails); v2 as kubelets 1.31+
      (V2 only); v1 as V1 only. With several files each line starts with the file.
  checksum-oracle compute  [--format auto|v1|v2] [--show-format] [FILE|-]
      The checksum of the file's data (auto: V1 when an entry's DeviceIDs is a list).
  checksum-oracle spew     [--format auto|v1|v2] [FILE|-]
      The exact text that checksum hashes (no newline at the end).
  checksum-oracle gen      [--seed N] [--pods P] [--containers C] [--resources R]
                           [--numa K] [--devs D] [--allocresp-pad BYTES] [--unicode]
                           [--format v1|v2] [--corrupt]
      One random valid checkpoint file, written by the kubelet's code, on stdout.
  checksum-oracle selftest DIR
      Checks every file of DIR/MANIFEST.tsv: verdict, checksums, hashed text.

exit status: 0 OK / agrees, 1 CORRUPT / disagrees, 2 usage or I/O error
`

func usage() {
	fmt.Fprint(os.Stderr, usageText)
	os.Exit(2)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "checksum-oracle: "+format+"\n", args...)
	os.Exit(2)
}

// readInput reads the named file, or stdin for none or "-".
func readInput(args []string) []byte {
	if len(args) > 1 {
		fail("one file at most, got %d", len(args))
	}
	var b []byte
	var err error
	if len(args) == 0 || args[0] == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(args[0])
	}
	if err != nil {
		fail("%v", err)
	}
	return b
}

func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "auto", "auto, v1 or v2")
}

func checkFormat(f string) {
	if f != "auto" && f != "v1" && f != "v2" {
		fail("--format must be auto, v1 or v2, not %q", f)
	}
}

func verifyCmd(args []string) int {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	mode := formatFlag(fs)
	fs.Parse(args)
	checkFormat(*mode)
	if fs.NArg() == 0 {
		usage()
	}
	rc := 0
	for _, path := range fs.Args() {
		blob, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "checksum-oracle: %v\n", err)
			rc = 2
			continue
		}
		ok, _, reason := verify(blob, *mode)
		verdict := "OK"
		if !ok {
			verdict = "CORRUPT"
			if rc == 0 {
				rc = 1
			}
		}
		if fs.NArg() > 1 {
			fmt.Printf("%s\t%s\t%s\n", path, verdict, reason)
		} else {
			fmt.Printf("%s\t%s\n", verdict, reason)
		}
	}
	return rc
}

// decodeCmd is compute and spew: decode one file and print one thing of it.
func decodeCmd(name string, args []string) int {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	format := formatFlag(fs)
	show := false
	if name == "compute" {
		fs.BoolVar(&show, "show-format", false, "print the format used after the checksum")
	}
	fs.Parse(args)
	checkFormat(*format)
	d, err := decode(readInput(fs.Args()), *format)
	if err != nil {
		fail("the kubelet cannot unmarshal this file as %s: %v", d.format, err)
	}
	switch {
	case name == "spew":
		os.Stdout.WriteString(d.text)
	case show:
		fmt.Printf("%d %s\n", d.computed, d.format)
	default:
		fmt.Println(d.computed)
	}
	return 0
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "verify":
		os.Exit(verifyCmd(args))
	case "compute", "spew":
		os.Exit(decodeCmd(cmd, args))
	case "gen":
		os.Exit(genCmd(args))
	case "selftest":
		os.Exit(selftestCmd(args))
	case "help", "-h", "--help":
		fmt.Print(usageText)
	default:
		fmt.Fprintf(os.Stderr, "checksum-oracle: unknown command %q\n\n", cmd)
		usage()
	}
}
