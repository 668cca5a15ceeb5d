#if GTKSupport
#else
print("asyncimage-gallery needs the trait GTKSupport: swift run --traits GTKSupport asyncimage-gallery")
#endif
