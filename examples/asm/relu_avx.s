# relu: y[i] = max(x[i], 0) for i < n, eight floats at a time with AVX.
#
# Loom calls it with the C calling convention (System V on x86-64):
#   void relu(const float* x, float* y, int64_t n)
#             %rdi            %rsi      %rdx
# x and y are compact and need not be aligned (vmovups); n may be 0 and
# need not be a multiple of 8 (the tail runs one float at a time).
  .text
  .globl relu
  .type relu, @function
  .p2align 4
relu:
  vxorps %ymm1, %ymm1, %ymm1        # eight zeros
  xorl %eax, %eax                   # i = 0
  movq %rdx, %rcx
  andq $-8, %rcx                    # n rounded down to a multiple of 8
.Lvector:
  cmpq %rcx, %rax
  jge .Ltail
  vmovups (%rdi,%rax,4), %ymm0
  vmaxps %ymm1, %ymm0, %ymm0
  vmovups %ymm0, (%rsi,%rax,4)
  addq $8, %rax
  jmp .Lvector
.Ltail:
  cmpq %rdx, %rax
  jge .Ldone
  vmovss (%rdi,%rax,4), %xmm0
  vmaxss %xmm1, %xmm0, %xmm0
  vmovss %xmm0, (%rsi,%rax,4)
  incq %rax
  jmp .Ltail
.Ldone:
  vzeroupper                        # leave no dirty upper halves behind
  ret
  .size relu, .-relu
