import java.io.FileInputStream;
import java.util.Properties;
import java.util.TreeMap;

/** Prints the properties java.util.Properties loads from a file, one escaped key/value per line. */
public class PrintProps {
    public static void main(String[] args) throws Exception {
        for (String file : args) {
            Properties p = new Properties();
            try (FileInputStream in = new FileInputStream(file)) {
                p.load(new java.io.InputStreamReader(in, java.nio.charset.StandardCharsets.UTF_8));
            }
            System.out.println("== " + file);
            for (var e : new TreeMap<Object, Object>(p).entrySet()) {
                System.out.println(esc((String) e.getKey()) + "\t" + esc((String) e.getValue()));
            }
        }
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c < 0x20 || c > 0x7e || c == '\\' || c == '\t') b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }
}
