#if GTKSupport
#endif
