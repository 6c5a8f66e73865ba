# axpy: out[i] = alpha * x[i] + y[i] for i < n, eight floats at a time
# with one fused multiply-add (FMA3) each.
#
#   void axpy(const float* alpha, const float* x, const float* y, float* out, int64_t n)
#             %rdi                %rsi            %rdx            %rcx        %r8
# alpha is a one-element tensor (a pointer, like every tensor).
  .text
  .globl axpy
  .type axpy, @function
  .p2align 4
axpy:
  vbroadcastss (%rdi), %ymm0        # alpha in all eight lanes
  xorl %eax, %eax
  movq %r8, %r9
  andq $-8, %r9
.Lvector:
  cmpq %r9, %rax
  jge .Ltail
  vmovups (%rdx,%rax,4), %ymm1
  vfmadd231ps (%rsi,%rax,4), %ymm0, %ymm1   # ymm1 += alpha * x[i..i+8]
  vmovups %ymm1, (%rcx,%rax,4)
  addq $8, %rax
  jmp .Lvector
.Ltail:
  cmpq %r8, %rax
  jge .Ldone
  vmovss (%rdx,%rax,4), %xmm1
  vfmadd231ss (%rsi,%rax,4), %xmm0, %xmm1
  vmovss %xmm1, (%rcx,%rax,4)
  incq %rax
  jmp .Ltail
.Ldone:
  vzeroupper
  ret
  .size axpy, .-axpy
