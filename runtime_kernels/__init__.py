"""Runtime companion: our own Triton kernels and the CUDA-graph replay engine that confirm a
static counterexample on real hardware (or on the CPU through the Triton interpreter).

Importing this package imports neither torch nor triton; its submodules do, on demand."""
