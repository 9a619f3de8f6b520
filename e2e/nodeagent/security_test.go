package nodeagent

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestContainerSecurity(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	yes, no := true, false
	all := make([]int, len(capNames))
	for i := range all {
		all[i] = i
	}
	tests := []struct {
		name      string
		pod       corev1.PodSecurityContext
		container *corev1.SecurityContext
		hostUsers *bool
		imageUser string
		want      initSecurity
		wantErr   string // "" for none
	}{
		{name: "nothing set, root image: unchanged"},
		{name: "image user and group", imageUser: "65532:65532", want: initSecurity{UID: u32(65532), GID: 65532}},
		{name: "runAsUser wins over the image, container over Pod", imageUser: "65532:65532",
			pod:       corev1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(1001), SupplementalGroups: []int64{5}, FSGroup: i64(6)},
			container: &corev1.SecurityContext{RunAsUser: i64(2000)},
			want:      initSecurity{UID: u32(2000), GID: 1001, Groups: []uint32{5, 6}}},
		{name: "groups alone switch credentials, uid stays 0", pod: corev1.PodSecurityContext{SupplementalGroups: []int64{7}},
			want: initSecurity{UID: u32(0), Groups: []uint32{7}}},
		{name: "runAsNonRoot with a non-root user", imageUser: "65532", pod: corev1.PodSecurityContext{RunAsNonRoot: &yes},
			want: initSecurity{UID: u32(65532)}},
		{name: "runAsNonRoot of a root image", pod: corev1.PodSecurityContext{RunAsNonRoot: &yes}, wantErr: "runAsNonRoot"},
		{name: "runAsNonRoot with runAsUser 0", imageUser: "65532", container: &corev1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(0)},
			wantErr: "runAsNonRoot"},
		{name: "the chart's", imageUser: "65532:65532",
			pod: corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(65532), RunAsGroup: i64(65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			container: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			want: initSecurity{UID: u32(65532), GID: 65532, DropCaps: all, NoNewPrivs: true, ReadOnlyRoot: true}},
		{name: "allowPrivilegeEscalation true, readOnlyRootFilesystem false",
			container: &corev1.SecurityContext{AllowPrivilegeEscalation: &yes, ReadOnlyRootFilesystem: &no}},
		{name: "named drops, less the added", container: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
			Drop: []corev1.Capability{"NET_RAW", "CAP_SYS_ADMIN", "kill"}, Add: []corev1.Capability{"KILL"}}},
			want: initSecurity{DropCaps: []int{13, 21}}},
		{name: "drop ALL, add NET_BIND_SERVICE", container: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
			Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
			want: initSecurity{DropCaps: append(append([]int(nil), all[:10]...), all[11:]...)}},
		{name: "unknown capability", container: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NOPE"}}},
			wantErr: "unknown capability"},
		{name: "image user name", imageUser: "nonroot", wantErr: "not numeric"},
		{name: "seLinuxOptions", container: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "t"}}, wantErr: "seLinuxOptions"},
		{name: "appArmorProfile RuntimeDefault", pod: corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}},
			wantErr: "appArmorProfile"},
		{name: "appArmorProfile Unconfined", container: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}},
		{name: "Localhost seccompProfile", container: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}},
			wantErr: "seccompProfile"},
		{name: "sysctls", pod: corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}, wantErr: "sysctls"},
		{name: "hostUsers false", hostUsers: &no, wantErr: "hostUsers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &tt.pod, HostUsers: tt.hostUsers}}
			got, err := containerSecurity(pod, &corev1.Container{SecurityContext: tt.container}, tt.imageUser)
			if tt.wantErr != "" {
				if !errors.Is(err, errContainerConfig) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want an errContainerConfig naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
