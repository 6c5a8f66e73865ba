/* npy.h: reading float32 .npy files (C-ordered, little
 * endian), for the C API example and its test.  C99, header only.
 *
 *   float* data; int64_t shape[8]; int32_t ndim;
 *   if (npy_read("x.npy", &data, shape, &ndim, err, sizeof err) != 0) ...
 *   free(data);
 */
#ifndef LOOM_EXAMPLES_C_NPY_H_
#define LOOM_EXAMPLES_C_NPY_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAX_DIMS 8

/* Reads a float32 array; 0, or -1 with a message in `err`. */
static int npy_read(const char* path, float** data, int64_t* shape, int32_t* ndim, char* err, size_t err_size) {
  unsigned char magic[10];
  char header[4096];
  size_t header_len, count = 1, got;
  const char* p;
  int32_t n = 0;
  FILE* f = fopen(path, "rb");
  *data = NULL;
  if (!f) {
    snprintf(err, err_size, "%s: cannot open", path);
    return -1;
  }
  if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0 || magic[6] != 1) {
    snprintf(err, err_size, "%s: not a version 1 .npy file", path);
    fclose(f);
    return -1;
  }
  header_len = (size_t)magic[8] | ((size_t)magic[9] << 8);
  if (header_len >= sizeof header || fread(header, 1, header_len, f) != header_len) {
    snprintf(err, err_size, "%s: truncated header", path);
    fclose(f);
    return -1;
  }
  header[header_len] = '\0';
  if (!strstr(header, "'descr': '<f4'") || !strstr(header, "'fortran_order': False")) {
    snprintf(err, err_size, "%s: not a C-ordered little-endian float32 array (header %.120s)", path, header);
    fclose(f);
    return -1;
  }
  p = strstr(header, "'shape': (");
  if (!p) {
    snprintf(err, err_size, "%s: no shape in the header", path);
    fclose(f);
    return -1;
  }
  p += strlen("'shape': (");
  while (*p && *p != ')') {
    char* end;
    long long d = strtoll(p, &end, 10);
    if (end == p) break;
    if (n == NPY_MAX_DIMS || d < 0) {
      snprintf(err, err_size, "%s: more than %d dimensions or a negative one", path, NPY_MAX_DIMS);
      fclose(f);
      return -1;
    }
    shape[n++] = (int64_t)d;
    count *= (size_t)d;
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  *ndim = n;
  *data = (float*)malloc(count ? count * sizeof(float) : 1);
  got = fread(*data, sizeof(float), count, f);
  fclose(f);
  if (got != count) {
    snprintf(err, err_size, "%s: %lu of %lu elements", path, (unsigned long)got, (unsigned long)count);
    free(*data);
    *data = NULL;
    return -1;
  }
  return 0;
}

#endif /* LOOM_EXAMPLES_C_NPY_H_ */
