#version 450
// Configure-time probe (shaders/meson.build): compiles iff glslang knows
// GL_KHR_cooperative_matrix. Not a kernel.
#extension GL_KHR_cooperative_matrix : require
layout(local_size_x = 32) in;
void main() {}
