package main

import (
	"flag"

	"k8s.io/klog/v2"
)

func flagSetForKlog() *flag.FlagSet {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return fs
}
