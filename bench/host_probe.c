// A fixed host-speed probe for bench/host_probe_study.py: FMA chains (compute) then a read+write sweep of
// 48 MiB per thread (memory), on T threads; prints {"gflops", "gbs", "compute_s"} as JSON. Build: cc -O2 -pthread.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int T; static long ITER=40000000; static size_t MB=48;
static volatile double sink;
static void* comp(void*a){double x[8];for(int i=0;i<8;i++)x[i]=1.0+i*1e-9;double m=0.9999999,c=1e-7;
 for(long i=0;i<ITER;i++){for(int k=0;k<8;k++)x[k]=x[k]*m+c;} double s=0;for(int i=0;i<8;i++)s+=x[i];sink=s;return 0;}
static void* mem(void*a){size_t n=MB*1024*1024/8;double*p=malloc(n*8);for(size_t i=0;i<n;i++)p[i]=i;
 double t0=now();double s=0;for(int r=0;r<6;r++){for(size_t i=0;i<n;i++){s+=p[i];p[i]=s*1e-12;}}
 *(double*)a=(6.0*n*16/1e9)/(now()-t0);sink=s;free(p);return 0;}
int main(int c,char**v){T=c>1?atoi(v[1]):2;pthread_t th[64];double bw[64];
 double t0=now();for(int i=0;i<T;i++)pthread_create(&th[i],0,comp,0);for(int i=0;i<T;i++)pthread_join(th[i],0);
 double tc=now()-t0;
 for(int i=0;i<T;i++)pthread_create(&th[i],0,mem,&bw[i]);for(int i=0;i<T;i++)pthread_join(th[i],0);
 double b=0;for(int i=0;i<T;i++)b+=bw[i];
 printf("{\"gflops\": %.3f, \"gbs\": %.3f, \"compute_s\": %.3f}\n", T*ITER*16.0/1e9/tc, b, tc);}
