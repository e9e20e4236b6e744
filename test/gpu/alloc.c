/*
 * alloc: allocate GPU memory in steps until a limit or an error, for test/gpu/fence.sh.
 *
 *   alloc STEP_MIB MAX_MIB
 *
 * It dlopens the driver's libcuda.so.1 (no CUDA toolkit or headers needed), makes a
 * context on device 0 and calls cuMemAlloc STEP_MIB at a time, holding each block, until
 * MAX_MIB are held or an allocation fails. It prints one line a step and, last,
 *
 *   reached=MIB err=NAME free=MIB total=MIB
 *
 * where err is CUDA_SUCCESS when MAX_MIB were reached and free/total are what
 * cuMemGetInfo answered before the first allocation (inside a limited cgroup the
 * driver may report the limit there). Exit 0 when it ran (whatever it reached), 2 when
 * the driver could not be loaded or initialised.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned int);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuCtxCreate)(CUcontext *, unsigned int, CUdevice);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemGetInfo)(size_t *, size_t *);
static CUresult (*cuGetErrorName)(CUresult, const char **);

static const char *name(CUresult r)
{
	const char *s = NULL;
	if (cuGetErrorName && cuGetErrorName(r, &s) == 0 && s)
		return s;
	return "CUDA_ERROR_UNKNOWN_CODE";
}

static void *need(void *lib, const char *sym)
{
	void *f = dlsym(lib, sym);
	if (!f) {
		fprintf(stderr, "alloc: libcuda.so.1 has no %s\n", sym);
		exit(2);
	}
	return f;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: alloc STEP_MIB MAX_MIB\n");
		return 2;
	}
	long step = atol(argv[1]), max = atol(argv[2]);
	if (step <= 0 || max < step) {
		fprintf(stderr, "alloc: want 0 < STEP_MIB <= MAX_MIB\n");
		return 2;
	}
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "alloc: %s\n", dlerror());
		return 2;
	}
	cuInit = need(lib, "cuInit");
	cuDeviceGet = need(lib, "cuDeviceGet");
	cuCtxCreate = need(lib, "cuCtxCreate_v2");
	cuMemAlloc = need(lib, "cuMemAlloc_v2");
	cuMemGetInfo = need(lib, "cuMemGetInfo_v2");
	cuGetErrorName = need(lib, "cuGetErrorName");

	CUresult r;
	CUdevice dev;
	CUcontext ctx;
	if ((r = cuInit(0)) != 0 || (r = cuDeviceGet(&dev, 0)) != 0 || (r = cuCtxCreate(&ctx, 0, dev)) != 0) {
		fprintf(stderr, "alloc: no context on device 0: %s\n", name(r));
		return 2;
	}
	size_t freeb = 0, total = 0;
	cuMemGetInfo(&freeb, &total);

	long held = 0;
	r = 0;
	while (held + step <= max) {
		CUdeviceptr p;
		r = cuMemAlloc(&p, (size_t)step << 20);
		if (r != 0)
			break;
		held += step; /* kept until exit: the point is how much the cgroup may hold */
		printf("held %ld MiB\n", held);
		fflush(stdout);
	}
	if (r != 0)
		printf("step to %ld MiB failed: %s\n", held + step, name(r));
	printf("reached=%ld err=%s free=%zu total=%zu\n", held, name(r), freeb >> 20, total >> 20);
	return 0;
}
