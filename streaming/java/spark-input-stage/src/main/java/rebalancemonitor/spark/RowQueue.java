package rebalancemonitor.spark;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.sql.Row;

/**
 * The output of a stage over one Spark partition's rows that holds some back: {@link #fill()} moves input to
 * {@link #ready} until it holds a row or the input ends (then it lets everything held go).
 */
abstract class RowQueue implements Iterator<Row> {
    protected final ArrayDeque<Row> ready = new ArrayDeque<>();

    /** Put at least one row in {@code ready}, unless nothing is left. */
    protected abstract void fill();

    @Override
    public boolean hasNext() {
        fill();
        return !ready.isEmpty();
    }

    @Override
    public Row next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        return ready.poll();
    }
}
