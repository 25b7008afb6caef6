; Stands in for the LLVM IR file in XLA's ptx-opt documentation: one kernel,
; out[i] = 2 * in[i], written as XLA writes its kernels.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @scale(ptr noalias align 16 %in, ptr noalias align 16 %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %idx = zext i32 %tid to i64
  %p = getelementptr inbounds float, ptr %in, i64 %idx
  %v = load float, ptr %p, align 4
  %m = fmul float %v, 2.000000e+00
  %q = getelementptr inbounds float, ptr %out, i64 %idx
  store float %m, ptr %q, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
