# 426_state_tmp_finish.pl: a start with no state file but a complete
# temporary one finishes the write (renames it into place) instead of starting
# from the clock (round 30 of the outside attack, F1).  The attacker's steps:
# IDs run seconds ahead of the clock (max_lead_ms; here the clock is set back), a directory takes the place
# of snowflake.state, a clean stop (its exact-mark write fails on the rename
# and leaves snowflake.state.tmp), the directory is moved away as the 42809
# hint says, and the server starts: it issued IDs an earlier run had issued.
# A temporary file cut short is not taken (nothing in it was published).

use strict;
use warnings FATAL => 'all';

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $t = SnowflakeTest->new('tmp_finish');
$t->start;
$t->query('CREATE EXTENSION snowflake');
my $state = $t->data_dir . '/snowflake.state';
my $tmp = $t->data_dir . '/snowflake.state.tmp';
my @before = $t->ids('SELECT snowflake_next() FROM generate_series(1, 1000)', 'before the stop', count => 1000);
my $hi = $before[-1];

unlink $state or die "could not remove $state: $!";
mkdir $state or die "could not create $state: $!";
my $log_offset = -s $t->node->logfile;
$t->stop('fast');
like(substr(slurp_file($t->node->logfile), $log_offset), qr/could not rename snowflake state file "snowflake\.state\.tmp": Is a directory/,
	'the clean stop could not write its exact mark');
like(substr(slurp_file($t->node->logfile), $log_offset),
	qr/DETAIL:  At shutdown: "snowflake\.state" is not there \(removed, or something in its place\), and the complete "snowflake\.state\.tmp" left holds the exact mark: the next start renames it into place\. Do not remove it\./,
	'its detail says the temporary file holds the mark (not that "the reservation written before stays in force")');
ok(-f $tmp, 'its temporary file is left');
rmdir $state or die "could not remove the directory $state: $!";
# The clock 5 s behind the IDs (the attacker ran them ahead with max_lead_ms):
# a start from the clock would issue IDs below the last one.
$t->set_clock('-5s');

$log_offset = -s $t->node->logfile;
$t->start;
like(substr(slurp_file($t->node->logfile), $log_offset),
	qr/snowflake state file "snowflake\.state" was missing: its complete temporary file "snowflake\.state\.tmp" was renamed into place/,
	'the start finished the write');
unlike(substr(slurp_file($t->node->logfile), $log_offset), qr/generation starts from the clock/,
	'it did not start from the clock');
is($t->query('SELECT state FROM snowflake_state()'), 'ok', 'the state is ok');
my @ids = $t->ids('SET snowflake.max_wait_ms = 30000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'after the start', count => 1000);
cmp_ok($ids[0], '>', $hi, 'the first ID after the start is above the last one before the stop');

# Round 31, F1: a complete temporary file the start cannot read may hold the
# mark: it is not removed, generation stops (58030) until it can be read.
unlink $state or die "could not remove $state: $!";
mkdir $state or die "could not create $state: $!";
$t->stop('fast');
ok(-f $tmp, 'a second stop with the directory in the way leaves the temporary file');
rmdir $state or die "could not remove the directory $state: $!";
chmod 0, $tmp or die "could not chmod $tmp: $!";
$t->start;
is($t->query('SELECT state FROM snowflake_state()'), 'unreadable', 'a temporary file that cannot be read: unreadable');
my $r = $t->next_refused('while the temporary file cannot be read', undef, sqlstate => '58030',
	message => qr/^could not read snowflake state file "snowflake\.state"$/);
like($r->{detail}, qr/It does not exist, and its temporary file "snowflake\.state\.tmp", which may hold the durable mark, could not be read\./,
	'the detail names the temporary file');
like($r->{hint}, qr/Do not remove the file, nor "snowflake\.state\.tmp": either may hold the durable mark\./,
	'the hint says to remove neither');
ok(-e $tmp, 'the temporary file is not removed');
$t->stop;
chmod 0600, $tmp or die "could not chmod $tmp: $!";
$t->start;
$t->ids('SET snowflake.max_wait_ms = 30000; SELECT snowflake_next() FROM generate_series(1, 1000)',
	'once it can be read, the next start takes it', count => 1000);

# Round 31, F2: a directory at both names.  The stop can leave no temporary
# file: its WARNING says the mark is lost (it said "the reservation written
# before stays in force", with no file there).
unlink $state or die "could not remove $state: $!";
mkdir $state or die "could not create $state: $!";
mkdir $tmp or die "could not create $tmp: $!";
$log_offset = -s $t->node->logfile;
$t->stop('fast');
like(substr(slurp_file($t->node->logfile), $log_offset),
	qr/WARNING:  could not create snowflake state file "snowflake\.state\.tmp": Is a directory\n(.*\n)?.*DETAIL:  At shutdown: "snowflake\.state" is not there \(removed, or something in its place\), and no complete temporary file was left: the mark is lost/,
	'a stop with directories at both names warns that the mark is lost');
rmdir $state or die;
rmdir $tmp or die;
$t->set_clock('+1h');    # past every ID: the documented way back after losing the file
$t->start;
$t->next_id('after the lost mark, an hour later');

# A temporary file cut short (a write that never reached its fsync) is not taken.
$t->stop;
unlink $state or die;
open my $fh, '>:raw', $tmp or die "could not write $tmp: $!";
print $fh "short";
close $fh;
$log_offset = -s $t->node->logfile;
$t->set_clock('+2h');    # past every ID: starting from the clock is the documented result of removing the file
$t->start;
like(substr(slurp_file($t->node->logfile), $log_offset), qr/snowflake temporary state file "snowflake\.state\.tmp" is not taken: /,
	'a temporary file cut short is not taken, and the log says so');
like(substr(slurp_file($t->node->logfile), $log_offset), qr/snowflake state file "snowflake\.state" created; generation starts from the clock/,
	'the removed file starts from the clock');
$t->next_id('after the removed file, two hours later');

$t->stop;
$t->summary;
done_testing();
