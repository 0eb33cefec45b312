#!/usr/bin/perl
# check_table.pl DOC HEADER... - fails when a public function of a header has no
# row in the bad-input table (docs/bad-input.md).
#
# Functions: every name with a layer prefix (Vip, AM_, _AM_, AMVIA_, splitc_)
# followed by "(" in a header, comments and #define heads removed; names made
# by token pasting ("AM_Request##N", "splitc_all_reduce_to_one_##OP##_##S")
# are kept with the "##" removed ("AM_RequestN", "splitc_all_reduce_to_one_OP_S"),
# which is how the table names such families.  Helpers ending in "_" are
# private, and all-capital names are macros (AMVIA_DEFINE_FORMS).  Table rows: lines starting with "|"; the names are the
# `backticked` words of the first cell.
use strict;
use warnings;

my ($doc, @headers) = @ARGV;
die "usage: check_table.pl DOC HEADER...\n" unless $doc && @headers;

my %rows;
open(my $d, '<', $doc) or die "check_table: cannot read $doc: $!\n";
while (my $line = <$d>) {
    next unless $line =~ /^\|([^|]*)\|/;
    my $first = $1;
    $rows{$1} = 1 while $first =~ /`([A-Za-z_][A-Za-z0-9_]*)`/g;
}
close $d;

my @missing;
my $functions = 0;
for my $h (@headers) {
    open(my $f, '<', $h) or die "check_table: cannot read $h: $!\n";
    local $/;
    my $text = <$f>;
    close $f;
    $text =~ s{/\*.*?\*/}{ }gs;                     # block comments
    $text =~ s{//[^\n]*}{}g;                        # line comments
    $text =~ s{^\s*#\s*define\s+\w+\([^)]*\)}{}mg;  # function-like macro heads
    $text =~ s/##//g;                               # pasted names
    my %seen;
    while ($text =~ /\b((?:Vip|_AM_|AM_|AMVIA_|splitc_)[A-Za-z0-9_]*)[ \t]*\(/g) {
        my $name = $1;
        next if $name =~ /_$/ || $name !~ /[a-z]/ || $seen{$name}++;
        $functions++;
        push @missing, "$name ($h)" unless $rows{$name};
    }
}
if (@missing) {
    print "docs/bad-input.md has no row for:\n";
    print "  $_\n" for @missing;
    exit 1;
}
print "check_table: all $functions public functions of ", scalar(@headers), " headers have rows\n";
exit 0;
