package nvmlsrc

// FlagName is the one flag every gpumem binary uses to pick its NVML backend.
const FlagName = "nvml"

// StringVarer is what both the standard library's and cobra's (pflag) flag sets offer.
type StringVarer interface {
	StringVar(p *string, name, value, usage string)
}

// AddFlag registers --nvml on fs, so gpumemd and gpumemctl select a backend alike.
func AddFlag(fs StringVarer, p *string) {
	fs.StringVar(p, FlagName, KindReal, "NVML backend: "+Usage)
}
